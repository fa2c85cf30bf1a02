"""The budget analyzer: where every microsecond of each step went, by cause. Its record (spec.py) is
light, for the CLI; the analysis (analyze.py) and its findings (findings.py) load when it runs; the per-rank
tables it reads are made by the per-rank pass (scope/rankpass/budget.py, budget_evidence.py)."""
