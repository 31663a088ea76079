"""The statistics room: every interval, ratio, verdict, pooled spread and power figure the report, the sweep's plan and
`bench compare` use is computed here, from numbers handed in (this package imports no record, report or run module).
- intervals: the t quantile, one process's median CI, intervals over processes (Welch), variance components
- moderated: spreads pooled across configs (a scaled-inverse-chi-squared prior), moderated intervals and ratios
- sweep_level: sweeps as a level above processes (a random-effects mean when sweeps differ)
- verdicts: what a ratio's interval means (winner / equivalent / undecided) and how it is written
- drift: a shift shared by every config between two folders, and each config's change beyond it
- power: split-half A/A rates and power curves of the verdict rule"""
