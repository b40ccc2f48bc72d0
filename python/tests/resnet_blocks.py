"""ResNet's basic block, shared by the convolution tests (test_convolution.py,
test_channels_last_intermediates.py)."""

import torch


class BasicBlock(torch.nn.Module):
    """ResNet's basic block: two 3x3 convolutions with batch norms, and a shortcut that is a
    strided 1x1 convolution with its batch norm where the block changes the stride or the
    channels, else the identity."""

    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(c_out)
        self.conv2 = torch.nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(c_out)
        self.down = (torch.nn.Sequential(torch.nn.Conv2d(c_in, c_out, 1, stride, bias=False),
                                         torch.nn.BatchNorm2d(c_out))
                     if stride != 1 or c_in != c_out else torch.nn.Identity())

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + self.down(x))
