"""The generator of the Rust client's generated layer (see ../generate.py)."""
