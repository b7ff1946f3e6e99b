"""Secrets in a memory's text and names, found before anything is embedded, indexed or written.

``detection`` finds them (Yelp's detect-secrets, loaded on first use, and patterns of its own),
marks them and deals with them as ``MEMTREE_SECRETS`` says: the one door every stored field
passes, and ``quoted``, which shows a caller's value in an error without repeating a secret;
``passwords`` the credentials people write by name, which no pattern of a key's shape finds,
gathered from the places people write them: ``credentials`` (what a credential's name and value
look like), ``commands`` (a tool's command line), ``calls`` (a connection call's arguments, DSNs in
code), ``sql``, ``file_formats`` (the files that keep one), ``sentences`` and ``conversation``
(prose, and a question answered on the next line).

May import ``core`` (the marker's shape, which stored text carries), detect-secrets and the
standard library. Light to import: the hook's quick path imports ``detection``, and detect-secrets
loads only when text is first checked.
"""
