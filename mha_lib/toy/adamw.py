"""AdamW's update written out (Loshchilov and Hutter, 2019): the optimizer ``toy.train`` steps with.

Each step is, operation for operation, what ``torch.optim.AdamW`` computes on a CPU (its single-tensor path), so a
training history is PyTorch's own to the last bit (``tests/test_toy.py`` trains with both and compares). The reason
it is not ``torch.optim.AdamW`` itself: the first ``torch.optim`` optimizer a process makes imports
``torch._dynamo`` (1.3-1.8 s on a 2-core CPU), a tenth of the 15 s a training notebook may take; nothing here
compiles. Notebook 02 teaches the update with ``torch.optim`` itself.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import Tensor


class AdamW:
    """Adam with decoupled weight decay, for the parameters that require a gradient.

    Per parameter ``p`` with gradient ``g`` at step ``t`` (``m``, ``v`` start at zero)::

        p <- p (1 - lr * weight_decay)
        m <- beta1 m + (1 - beta1) g                 (exp_avg)
        v <- beta2 v + (1 - beta2) g^2               (exp_avg_sq)
        p <- p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
    """

    def __init__(self, params: Iterable[Tensor], *, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0) -> None:
        self.params = [p for p in params if p.requires_grad]
        self.lr, (self.beta1, self.beta2), self.eps, self.weight_decay = lr, betas, eps, weight_decay
        self.steps = [0] * len(self.params)  # per parameter: one without a gradient is not stepped
        self.exp_avg = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]

    def zero_grad(self) -> None:
        """Forget every gradient (``set_to_none``, as ``torch.optim`` does by default)."""
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """One update of every parameter that has a gradient."""
        for i, (p, m, v) in enumerate(zip(self.params, self.exp_avg, self.exp_avg_sq)):
            if p.grad is None:
                continue
            self.steps[i] += 1
            t = float(self.steps[i])  # torch.optim keeps the step in a float tensor and reads it back as a float
            step_size = self.lr / (1 - self.beta1**t)
            bias_correction2_sqrt = (1 - self.beta2**t) ** 0.5
            g = p.grad
            if self.weight_decay != 0:
                p.mul_(1 - self.lr * self.weight_decay)
            m.lerp_(g, 1 - self.beta1)
            v.mul_(self.beta2).addcmul_(g, g, value=1 - self.beta2)
            denom = (v.sqrt() / bias_correction2_sqrt).add_(self.eps)
            p.addcdiv_(m, denom, value=-step_size)
