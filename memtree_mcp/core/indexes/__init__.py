"""What a memory keeps beside its trees so that recall ranks every node fast.

``vectors`` the matrix of node vectors; ``lexical`` the BM25 index over the memories' words;
``arrays`` the trees' shapes and the timeline as numpy arrays, kept up to date node by node;
``gathering`` the authors and dates a query names, matched against what is stored.

May import ``trees/`` and the shared modules at the top of core; numpy and the standard library
only.
"""
