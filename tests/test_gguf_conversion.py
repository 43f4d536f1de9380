"""The default model's conversion reads its GGUF file once (``models._gguf_read_once``).

transformers parses the whole file for the tokenizer, the config and the weights, and builds gguf's tensor-name
table once per module of the model; during the conversion both are made once. A tiny GGUF file written here stands
in for the model's (``benchmarks/gguf_conversion.py`` converts the real one both ways and compares every tensor).
"""

import numpy as np
import pytest

from split_builders.signals.lm import models

gguf = pytest.importorskip("gguf")


@pytest.fixture()
def tiny_gguf(tmp_path):
    path = tmp_path / "tiny.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(2)
    writer.add_context_length(16)
    writer.add_embedding_length(4)
    writer.add_tensor("token_embd.weight", np.arange(12, dtype=np.float32).reshape(3, 4))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_the_file_is_parsed_once_and_the_name_table_built_once_while_converting(tiny_gguf, monkeypatch):
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    parsed = []

    class Counted(gguf.GGUFReader):
        def __init__(self, path, mode="r"):
            parsed.append(str(path))
            super().__init__(path, mode)

    monkeypatch.setattr(gguf, "GGUFReader", Counted)
    real_name_map = gguf.get_tensor_name_map
    with models._gguf_read_once():
        first, second = load_gguf_checkpoint(str(tiny_gguf)), load_gguf_checkpoint(str(tiny_gguf))
        assert parsed == [str(tiny_gguf)]  # the tokenizer's, the config's and the weights' reads share one parse
        assert first == second and first["config"]["num_hidden_layers"] == 2
        arch = gguf.MODEL_ARCH.LLAMA
        assert gguf.get_tensor_name_map(arch, 2) is gguf.get_tensor_name_map(arch, 2)
        assert gguf.get_tensor_name_map(arch, 2) is not gguf.get_tensor_name_map(arch, 3)
    # outside the conversion, gguf is as it was: every read parses the file again
    assert gguf.GGUFReader is Counted and gguf.get_tensor_name_map is real_name_map
    load_gguf_checkpoint(str(tiny_gguf))
    assert parsed == [str(tiny_gguf)] * 2
