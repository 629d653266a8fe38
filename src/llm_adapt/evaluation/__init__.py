"""Task accuracy through lm-evaluation-harness: the served model against the gold, paired by item."""
