"""What the checks read from a binary: one reader per format (elf.py with pyelftools, macho.py
with macholib's layouts, pe.py with pefile, fatbin.py for CUDA device code), each giving the
one view rules/linked.py reads (binary.py's ``Binary``)."""
