"""The default model's first conversion (GGUF to a transformers folder): resplit's ``_convert_gguf`` (the file read
once, gguf's tensor-name table built once) against transformers' plain path (the file read three times, the table
built once per module), side by side, and every tensor and tokenizer file of the two folders compared exactly.

    python benchmarks/gguf_conversion.py          # both conversions into a temporary folder (about a minute here; imports first)

Exits 1 if any tensor (name, dtype, shape or a single bit) or any tokenizer file differs.
"""

from __future__ import annotations

import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def plain_conversion(gguf: Path, target: Path) -> None:
    """The conversion as transformers does it unaided: what ``_convert_gguf`` did before it read the file once."""
    from unittest import mock

    from split_builders.signals.lm import models

    with mock.patch.object(models, "_gguf_read_once", _nothing):
        models._convert_gguf(gguf, target)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def tensors(folder: Path) -> dict:
    from safetensors.torch import load_file

    found = {}
    for path in sorted(folder.glob("*.safetensors")):
        found.update(load_file(str(path)))
    return found


def differences(a: Path, b: Path) -> list:
    import torch

    lines = []
    first, second = tensors(a), tensors(b)
    if first.keys() != second.keys():
        lines.append(f"tensor names differ: {sorted(first.keys() ^ second.keys())[:10]}")
    for name in sorted(first.keys() & second.keys()):
        x, y = first[name], second[name]
        if x.dtype != y.dtype or x.shape != y.shape or not torch.equal(x.view(torch.uint8), y.view(torch.uint8)):
            lines.append(f"{name}: differs")
    files = lambda folder: {p.name: p.read_bytes() for p in folder.iterdir() if p.suffix != ".safetensors"}  # noqa: E731
    for name, data in files(a).items():
        if files(b).get(name) != data:
            lines.append(f"{name}: differs")
    return lines + [f"{name}: only in {b}" for name in files(b).keys() - files(a).keys()]


def main() -> int:
    from split_builders.signals.lm import models

    gguf = models._smollm2_gguf()
    # the imports and the file's pages in memory first, so that neither conversion pays for them
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer  # noqa: F401

    with models._gguf_read_once():
        AutoConfig.from_pretrained(gguf.parent, gguf_file=gguf.name)
    with tempfile.TemporaryDirectory() as work:
        times = {}
        for name, convert in (("transformers (plain)", plain_conversion), ("resplit (read once)", models._convert_gguf)):
            started = time.perf_counter()
            convert(gguf, Path(work) / name)
            times[name] = time.perf_counter() - started
        found = differences(*(Path(work) / name for name in times))
        print(f"{platform.processor() or platform.machine()}: first conversion of {gguf.name}")
        for name, seconds in times.items():
            print(f"  {name:<22} {seconds:6.1f} s")
        plain, once = times.values()
        print(f"  speed-up {plain / once:.2f}x; {len(tensors(Path(work) / 'resplit (read once)'))} tensors, "
              f"{'identical' if not found else 'DIFFERENT'}")
        for line in found:
            print("  " + line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
