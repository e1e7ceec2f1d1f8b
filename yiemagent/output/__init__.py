"""What a run gives back.

The answer dict (``answers``), typed answers (``typed_output``) and one typed run (``typed_run``).
"""
