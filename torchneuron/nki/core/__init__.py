"""The NumPy core both front ends share: storage, tensor views, affine indexing, operator tables, run state."""
