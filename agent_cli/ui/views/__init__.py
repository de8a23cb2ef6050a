"""Rich views over typed data: each a renderable built from records the lower layers return."""
