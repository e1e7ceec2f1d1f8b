"""What a long conversation sends and spends.

Token budgets (``token_budget``), compaction (``compaction``), ready-made ``prepare_context`` strategies
(``strategies``), "context too long" errors (``overflow``) and usage limits (``usage_limits``).
"""
