"""framemill's `restore` example model as a torch.nn.Module, its weights read from the
TorchScript file named by $RESTORE_PT: the --module input of scripts/export-pt2.py, used by
the pt2 and pt2fixed cases (scripts/gpu/run-case.py) when the --torchscript path fails. The same arithmetic as the TorchScript
(worker/model/example_models.cpp) and as model-reference.py's eager network."""
import os

import torch
import torch.nn.functional as F


class Restore(torch.nn.Module):
    def __init__(self, path):
        super().__init__()
        params = dict(torch.jit.load(path, map_location="cpu").named_parameters())
        self.blocks = sum(1 for n in params if n.endswith("_a_w"))
        for name, p in params.items():
            self.register_parameter(name, torch.nn.Parameter(p.detach().clone(), requires_grad=False))

    def forward(self, x):
        y = F.conv2d(x, self.head_w, self.head_b, padding=1)
        for i in range(self.blocks):
            a_w, a_b = getattr(self, f"block{i}_a_w"), getattr(self, f"block{i}_a_b")
            b_w, b_b = getattr(self, f"block{i}_b_w"), getattr(self, f"block{i}_b_b")
            r = F.relu(F.conv2d(y, a_w, a_b, padding=1))
            y = y + 0.1 * F.conv2d(r, b_w, b_b, padding=1)
        y = F.conv2d(y, self.tail_w, self.tail_b, padding=1)
        return torch.clamp(x + 0.05 * torch.tanh(y), 0.0, 1.0)


def model():
    return Restore(os.environ["RESTORE_PT"])
