"""Live detection while a job runs: stragglers, hangs and slow collectives named as steps arrive.

The detector (`detector.LiveDetector`) is pure and incremental: it is fed one rank's step samples and
heartbeats (`samples`) and, when asked, returns the findings that appeared or cleared since the last
look, as `scope.finding.Finding`s in the words of `scope analyze`. It never runs in the job: `scope run`
feeds it on a launcher thread of its own and `scope watch RUN` in its own process, both from what the hook already
writes in the run directory (`tail`). Alerts (`alerts`), Prometheus metrics (`metrics`) and replays of a
recorded run or an operation timeline (`replay`) are other feeds and sinks of the same detector.
"""
