"""The small transformers models and inputs the package tests share (test_aot.py,
test_aot_compile_capture.py): random weights from a config, nothing downloaded."""

import os

import torch

from eager_comparison import summation_tolerance

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from transformers import BertConfig, BertModel, GPT2Config, GPT2Model  # noqa: E402

HIDDEN = 64
INTERMEDIATE = 128


def tiny_bert():
    torch.manual_seed(0)
    config = BertConfig(vocab_size=100, hidden_size=HIDDEN, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=INTERMEDIATE,
                        max_position_embeddings=64)
    return BertModel(config).eval()


def tiny_gpt2():
    torch.manual_seed(0)
    return GPT2Model(GPT2Config(vocab_size=100, n_embd=64, n_layer=2, n_head=4, n_positions=64,
                                bos_token_id=0, eos_token_id=0, use_cache=False)).eval()


def tolerance(magnitude):
    return summation_tolerance(torch.float32, INTERMEDIATE, magnitude)


def ids(length, seed=0, batch=2):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 100, (batch, length), generator=g)
