"""A small residual net, x + 0.1*conv(relu(conv(x))), random weights (seed 0): the --module
input of scripts/export-pt2.py that made tests/data/tiny-cuda.pt2 (tests/data/SOURCES.md)."""
import torch
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.a = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.b = torch.nn.Conv2d(16, 3, 3, padding=1)
    def forward(self, x):
        return x + 0.1 * self.b(torch.relu(self.a(x)))
def model():
    return Net()
