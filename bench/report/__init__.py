"""The report: tidy tables, figures, computed findings and the HTML/PDF export, over all records."""
