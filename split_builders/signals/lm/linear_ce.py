"""A chunked linear cross-entropy: the causal LM loss without the ``[tokens x vocabulary]`` logits,
and the ``Trainer`` that trains packed batches with it.

The language-model head and the cross-entropy are fused: only the hidden states of the labelled
positions are projected, a chunk of ``chunk`` positions at a time, the logits of a chunk are
reduced in float32 (logsumexp minus the target logit) and the gradients with respect to the hidden
states and the head's weight are computed in the same pass, so at most one chunk's logits exist
at any time (the approach of Liger Kernel's fused linear cross-entropy, in plain PyTorch so it
runs on CPUs too). Results equal ``cross_entropy(hidden @ weight.T + bias, targets)`` up to float
rounding (a test checks value and gradients).
"""

from __future__ import annotations

import torch

CHUNK = 1024  # positions projected at once: 1024 x 50,257 float32 logits are 206 MB


class _LinearCrossEntropy(torch.autograd.Function):
    """Sum over rows of -log softmax(hidden @ weight.T + bias)[target]; gradients computed in the forward."""

    @staticmethod
    def forward(ctx, hidden, weight, bias, targets, chunk):
        wants = ctx.needs_input_grad
        grad_hidden = torch.empty_like(hidden) if wants[0] else None
        accumulate = torch.float64 if hidden.dtype == torch.float64 else torch.float32  # float32 at least
        grad_weight = torch.zeros_like(weight, dtype=accumulate) if wants[1] else None
        grad_bias = torch.zeros_like(bias, dtype=accumulate) if bias is not None and wants[2] else None
        total = torch.zeros((), dtype=accumulate, device=hidden.device)
        for start in range(0, hidden.shape[0], chunk):
            part, target = hidden[start:start + chunk], targets[start:start + chunk]
            logits = part @ weight.T  # under autocast: in the autocast dtype, like the model's own head
            if bias is not None:
                logits = logits + bias
            logits = logits.to(accumulate)
            logsumexp = torch.logsumexp(logits, dim=-1)
            total = total + (logsumexp - logits.gather(1, target[:, None])[:, 0]).sum()
            if grad_hidden is None and grad_weight is None and grad_bias is None:
                continue
            grad_logits = (logits - logsumexp[:, None]).exp_()  # softmax ...
            grad_logits[torch.arange(len(target), device=target.device), target] -= 1  # ... minus the one-hot
            if grad_bias is not None:
                grad_bias += grad_logits.sum(0)
            grad_logits = grad_logits.to(part.dtype if part.dtype == weight.dtype else accumulate)
            if grad_hidden is not None:
                grad_hidden[start:start + chunk] = grad_logits @ weight.to(grad_logits.dtype)
            if grad_weight is not None:
                grad_weight += (grad_logits.T @ part.to(grad_logits.dtype)).to(accumulate)
        ctx.save_for_backward(*(g if g is not None else torch.empty(0) for g in (grad_hidden, grad_weight, grad_bias)))
        ctx.present = (grad_hidden is not None, grad_weight is not None, grad_bias is not None)
        ctx.dtypes = (hidden.dtype, weight.dtype, bias.dtype if bias is not None else None)
        return total

    @staticmethod
    def backward(ctx, grad_output):
        grads = [(g * grad_output).to(dtype) if present else None
                 for g, present, dtype in zip(ctx.saved_tensors, ctx.present, ctx.dtypes)]
        return grads[0], grads[1], grads[2], None, None


def linear_cross_entropy(hidden, weight, targets, *, bias=None, chunk: int = CHUNK):
    """Summed cross-entropy of ``hidden @ weight.T + bias`` (shape ``[rows, vocabulary]``, never
    materialised whole) against ``targets``; differentiable in ``hidden``, ``weight`` and ``bias``."""
    return _LinearCrossEntropy.apply(hidden, weight, bias, targets, chunk)


def causal_lm_loss(hidden, labels, weight, *, bias=None, num_items_in_batch=None, chunk: int = CHUNK):
    """The causal LM loss of ``transformers`` (position t predicts label t + 1, -100 ignored) from
    the body's last hidden states ``[batch, tokens, width]`` and the head's weight: the sum over
    the labelled positions divided by ``num_items_in_batch`` (the labelled tokens of the whole
    accumulated step, as the ``Trainer`` counts them) or, when None, by this batch's."""
    targets = labels[:, 1:]
    keep = targets != -100
    total = linear_cross_entropy(hidden[:, :-1][keep], weight, targets[keep], bias=bias, chunk=chunk)
    return total / (num_items_in_batch if num_items_in_batch is not None else keep.sum())


# -- the Trainer ------------------------------------------------------------------------------

def trainer_class(packed: bool):
    """``transformers.Trainer``, or for packed batches one whose loss is the chunked linear
    cross-entropy over the body's hidden states (never the full logits) when the model's logits
    are its head applied to them (``chunked_loss``, checked per model), else the model's own loss."""
    from transformers import Trainer

    if not packed:
        return Trainer

    class PackedTrainer(Trainer):
        chunked_loss = True

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            inputs = {name: value for name, value in inputs.items() if name != "rows"}
            labels = inputs.pop("labels")
            if self.chunked_loss:
                lm = self.accelerator.unwrap_model(model)
                outputs, hidden = hidden_states(model, lm, inputs)  # through the wrapper: DDP syncs gradients
                head = lm.get_output_embeddings()
                loss = causal_lm_loss(hidden, labels, head.weight, bias=head.bias, num_items_in_batch=num_items_in_batch)
            else:
                if self.model_accepts_loss_kwargs and num_items_in_batch is not None:
                    inputs["num_items_in_batch"] = num_items_in_batch
                outputs = model(**inputs, labels=labels, use_cache=False)
                loss = outputs.loss
            if self.args.average_tokens_across_devices and num_items_in_batch is not None:
                loss = loss * self.accelerator.num_processes  # as Trainer.compute_loss: DDP averages gradients
            return (loss, outputs) if return_outputs else loss

    return PackedTrainer


def hidden_states(model, lm, inputs):
    """(outputs, last hidden states) of a forward pass that projects no position onto the vocabulary.

    ``use_cache=False``: with a cache, ``transformers``' masking utils do not read restarting
    position ids as packed rows (each row would attend to the ones before it)."""
    captured = []
    handle = lm.base_model.register_forward_hook(lambda module, args, output: captured.append(output[0]))
    try:
        outputs = model(**inputs, use_cache=False,
                        logits_to_keep=torch.empty(0, dtype=torch.long, device=inputs["input_ids"].device))
    finally:
        handle.remove()
    return outputs, captured[-1]


def logits_are_projection(model, logits, hidden) -> bool:
    """Are ``logits`` the model's output projection of ``hidden`` (no soft-capping, scaling or other
    post-processing of the logits, which the chunked paths would skip)? Compared in the model's own
    precision, to that precision's rounding: a bfloat16 model's logits are bfloat16, and comparing them
    with a float32 projection would refuse the chunked path for rounding alone."""
    head = model.get_output_embeddings()
    if not isinstance(head, torch.nn.Linear):
        return False
    with torch.inference_mode():
        own = torch.nn.functional.linear(hidden, head.weight, head.bias)
    if own.shape != logits.shape:
        return False
    eps = torch.finfo(logits.dtype).eps
    return bool(torch.allclose(own.float(), logits.float(), rtol=8 * eps, atol=8 * eps))


def chunked_loss_matches(model) -> bool:
    """Whether the chunked loss may stand for the model's own on a small packed probe: its logits are its
    head's projection of its last hidden state (:func:`logits_are_projection`; a model that post-processes
    its logits, e.g. soft-capping, gets its own loss)."""
    from split_builders.signals.lm.training_batches import PackedCollator

    head = model.get_output_embeddings()
    if not isinstance(head, torch.nn.Linear):
        return False
    vocab = head.weight.shape[0]
    features = [{"row": 0, "input_ids": [i % vocab for i in (1, 2, 3, 4, 5, 6)], "query_start": 3},
                {"row": 1, "input_ids": [i % vocab for i in (6, 5, 4)], "query_start": 1}]
    batch = {name: value.to(head.weight.device) for name, value in PackedCollator().pack(features).items() if name != "rows"}
    batch.pop("labels")
    training = model.training
    model.eval()  # no dropout: both passes must see the same network
    try:
        with torch.no_grad():
            logits = model(**batch, use_cache=False).logits
            _, hidden = hidden_states(model, model, batch)
    except (TypeError, ValueError, IndexError):
        return False
    finally:
        model.train(training)
    return logits_are_projection(model, logits, hidden)
