"""`agent-cli eval`: run tasks through the real session loop, check the state they leave and the
rules they kept, and report pass@k and pass^k.

tasks.py is the task file's shape and its validation; answers.py who may approve a trial's calls;
runner.py runs one trial; workers.py runs trials in isolated worker processes; checks.py judges a
finished trial; report.py adds trials up and prints them.
"""
