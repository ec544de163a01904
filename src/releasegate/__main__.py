from releasegate.cli import run

run()
