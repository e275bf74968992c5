"""The real pair: SmolLM2-135M-Instruct from PyPI (target.py), the prompts its heads learn from
(prompts.py), the heads' recipe (recipe.py) and the shipped heads (heads.py, heads/)."""
