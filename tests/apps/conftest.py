"""The apps here run in other processes, configured by environment variables: pytest does not import them."""

collect_ignore_glob = ["*.py"]
