"""The processes of a run: the process group of a distributed run (``torchrun`` / ``accelerate launch``),
shared by the signal (scoring, fine-tuning) and the build (which holds the processes together around the folder
it writes), and what SIGTERM does to a process while it works.

Contracts-level: it imports torch and ``accelerate`` only when a process group is asked for.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading

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


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Inside, SIGTERM (what ``kill``, ``timeout`` and job schedulers send) raises KeyboardInterrupt as Ctrl-C
    does, so that what is in progress is cleaned up or saved (a build's staging folder removed and its lock
    released, scores checkpointed) and the CLI says "interrupted" in one line, instead of the process vanishing.
    In the main thread only (where Python delivers signals; elsewhere nothing changes); the previous handler is
    restored on leaving, so these nest."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
