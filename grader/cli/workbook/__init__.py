"""Command-line side of the workbook: lessons, building submissions, grading, progress."""
