"""The models of bench/models: Hugging Face `transformers` models built from config objects
with random weights (nothing is downloaded), 2 layers each with the real models' hidden sizes,
and the inputs of each benchmark case."""

from __future__ import annotations

import torch

# Tokens per sequence of the text models and the side of the vision models' images.
SEQ = 128
IMAGE = 224


def _bert():
    from transformers import BertConfig, BertModel

    cfg = BertConfig(hidden_size=768, num_attention_heads=12, intermediate_size=3072,
                     num_hidden_layers=2, attn_implementation="eager")
    return BertModel(cfg), "text", cfg.vocab_size


def _bert_sdpa():
    from transformers import BertConfig, BertModel

    # transformers' default attention: F.scaled_dot_product_attention (PyTorch's fused CPU
    # flash attention in eager and inductor, Stax's runtime attention in Stax).
    cfg = BertConfig(hidden_size=768, num_attention_heads=12, intermediate_size=3072,
                     num_hidden_layers=2, attn_implementation="sdpa")
    return BertModel(cfg), "text", cfg.vocab_size


def _gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(n_embd=768, n_head=12, n_layer=2, n_positions=1024,
                     attn_implementation="eager")
    return GPT2LMHeadModel(cfg), "text", cfg.vocab_size


def _t5_encoder():
    from transformers import T5Config, T5EncoderModel

    # t5-base's sizes.
    cfg = T5Config(d_model=768, d_kv=64, d_ff=3072, num_heads=12, num_layers=2,
                   attn_implementation="eager")
    return T5EncoderModel(cfg), "text", cfg.vocab_size


def _llama():
    from transformers import LlamaConfig, LlamaModel

    # A small LLaMA-style decoder: RMSNorm, rotary embeddings, SiLU-gated MLP, 2 layers.
    cfg = LlamaConfig(hidden_size=1024, intermediate_size=2752, num_attention_heads=16,
                      num_key_value_heads=16, num_hidden_layers=2, vocab_size=32000,
                      attn_implementation="eager")
    return LlamaModel(cfg), "text", cfg.vocab_size


def _llama_gqa_sdpa():
    from transformers import LlamaConfig, LlamaModel

    # The LLaMA-style decoder with grouped-query attention (16 query heads over 4 key/value
    # heads) through scaled_dot_product_attention, causal.
    cfg = LlamaConfig(hidden_size=1024, intermediate_size=2752, num_attention_heads=16,
                      num_key_value_heads=4, num_hidden_layers=2, vocab_size=32000,
                      attn_implementation="sdpa")
    return LlamaModel(cfg), "text", cfg.vocab_size


def _vit():
    from transformers import ViTConfig, ViTModel

    cfg = ViTConfig(hidden_size=768, num_attention_heads=12, intermediate_size=3072,
                    num_hidden_layers=2, image_size=IMAGE, patch_size=16,
                    attn_implementation="eager")
    return ViTModel(cfg, add_pooling_layer=False), "image", None


def _resnet18():
    from transformers import ResNetConfig, ResNetModel

    # ResNet-18's stages (basic blocks, 2 per stage), all four of them: the "2 layers" of the
    # transformers is here 2 blocks per stage, as in the real model.
    cfg = ResNetConfig(embedding_size=64, hidden_sizes=[64, 128, 256, 512], depths=[2, 2, 2, 2],
                       layer_type="basic")
    return ResNetModel(cfg), "image", None


BUILDERS = {
    "bert": _bert,
    "bert-sdpa": _bert_sdpa,
    "gpt2": _gpt2,
    "t5-encoder": _t5_encoder,
    "llama": _llama,
    "llama-gqa-sdpa": _llama_gqa_sdpa,
    "vit": _vit,
    "resnet18": _resnet18,
}


def build(name: str, dtype: torch.dtype, seed: int = 0):
    """(model, kind, vocab) with random weights from `seed`, in `dtype`."""
    torch.manual_seed(seed)
    model, kind, vocab = BUILDERS[name]()
    return model.to(dtype), kind, vocab


def make_inputs(kind: str, vocab, batch: int, dtype: torch.dtype, seed: int = 1) -> dict:
    g = torch.Generator().manual_seed(seed)
    if kind == "text":
        return {"input_ids": torch.randint(0, vocab, (batch, SEQ), generator=g)}
    return {"pixel_values": torch.randn(batch, 3, IMAGE, IMAGE, generator=g).to(dtype)}


def main_output(out) -> torch.Tensor:
    """The tensor a step's loss is taken from: logits or the last hidden state."""
    for key in ("logits", "last_hidden_state"):
        value = getattr(out, key, None)
        if value is not None:
            return value
    return out[0]
