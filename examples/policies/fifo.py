"""First in, first out, in Python: the C++ `fifo` (src/policy/fifo.cc) line
for line, so `--policy py:examples/policies/fifo.py:Fifo` writes the same
jobs.csv as `--policy fifo`.

Non-preemptive: a started job's lease is renewed at every lease end. Jobs
start strictly in arrival order; the first that does not fit stops the round
(head-of-line blocking) unless backfill=on, which goes on down the queue.
"""
import fairgpu


class Fifo:
    # Besides the keys every round policy has (round, lease, spread_min,
    # spread_wait), with the C++ time-sharing policies' defaults.
    options = [
        fairgpu.Option("backfill", False, "later jobs fill GPUs the head cannot use"),
    ]

    def schedule(self, state):
        rnd = state.gang_round()
        if not rnd.worth_planning():
            return None
        lease_end = state.now + self.options["lease"]
        rnd.renew_all(lease_end)
        for job in rnd.decidable():
            if rnd.granted(job):
                continue
            if rnd.grant(job, lease_end):
                continue
            if not self.options["backfill"]:
                break
        return rnd.plan()
