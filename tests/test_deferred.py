"""lancedb's REST client loads its package initialiser only when used (store/deferred.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_the_rest_client_stays_unloaded_by_a_local_store_yet_whole_for_code_that_uses_it(tmp_path) -> None:
    # A fresh interpreter: the suite's own process has long imported everything.
    script = textwrap.dedent(
        f"""
        import sys
        import memtree_mcp.store.lance  # imports lancedb
        import lancedb

        table = lancedb.connect({str(tmp_path)!r}).create_table("t", data=[{{"x": 1}}])
        assert table.count_rows() == 1
        apis = [m for m in sys.modules if m.startswith("lance_namespace_urllib3_client.api.")]
        assert apis == [], apis

        import lance_namespace_urllib3_client as client
        from lance_namespace_urllib3_client import ApiClient, TableApi
        from lance_namespace_urllib3_client.api.table_api import TableApi as TableApiItself

        assert TableApi is TableApiItself
        assert ApiClient.__module__ == "lance_namespace_urllib3_client.api_client"
        assert client.__version__
        try:
            client.no_such_name
        except AttributeError as error:
            assert "no_such_name" in str(error)
        else:
            raise AssertionError("a missing name must raise AttributeError")
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
