"""`agent-cli eval`: run tasks through the real session loop, check the state they leave and the
rules they kept, and report pass@k and pass^k (design.md section 9).

tasks.py is the task file's shape and its validation; runner.py runs one trial; checks.py judges
a finished trial; report.py adds trials up and prints them.
"""
