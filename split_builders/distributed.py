"""The process group of a distributed run (``torchrun`` / ``accelerate launch``), shared by the signal
(scoring, fine-tuning) and the build (which holds the processes together around the folder it writes).

Contracts-level: it imports torch and ``accelerate`` only when a process group is asked for.
"""

from __future__ import annotations

import os

from split_builders.errors import InvalidParameterError


def process_state(device: str | None = None):
    """The ``accelerate`` process group of this run, on the CPU when asked or when no CUDA GPU is
    there. Under ``torchrun --nproc_per_node N`` on a CPU machine, ``PartialState()`` without
    ``cpu=True`` sets up no process group and reports one process in each: N full runs that each
    write the folder. With ``cpu=True`` the N processes form a gloo group and share the work; a
    group that still disagrees with the launcher's ``WORLD_SIZE`` is refused."""
    import torch
    from accelerate import PartialState

    state = PartialState(cpu=device == "cpu" or not torch.cuda.is_available())
    launched = int(os.environ.get("WORLD_SIZE", "1"))
    if state.num_processes != launched:
        raise InvalidParameterError(
            f"the launcher started {launched} processes but they formed a group of {state.num_processes}; "
            "launch with torchrun / accelerate launch and a backend that works here (gloo on CPUs, nccl on GPUs)")
    return state
