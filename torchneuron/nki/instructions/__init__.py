"""The instruction implementations shared by both front ends (dst-first, like the current `nki.isa`)."""
