// Builds the precompiled <torch/torch.h> that the engine's torch parts and torch tests reuse.
