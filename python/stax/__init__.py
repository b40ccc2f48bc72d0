"""Stax: a CPU tensor compiler. `import stax` registers the torch.compile backend "stax"."""
