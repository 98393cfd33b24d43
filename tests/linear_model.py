"""A linear logit model x -> x·a + b, shared by the baseline tests."""

import torch
from torch import nn


class Linear(nn.Module):
    def __init__(self, a, b=0.0):
        super().__init__()
        self.a, self.b = nn.Parameter(torch.as_tensor(a)), b

    def forward(self, x):
        return x @ self.a + self.b
