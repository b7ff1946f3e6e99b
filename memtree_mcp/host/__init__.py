"""The machine's utilities: the ground floor under everything that touches the process or the disk.

``heap`` the process's C heap (giving freed pages back to the system, pausing the collector),
through ctypes; ``folders`` a project folder's namespace (walking up to the project's root);
``addresses`` which host names and addresses stay on this machine.

May import nothing of the package, and no library but the standard library.
"""
