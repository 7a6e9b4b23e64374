"""Shortest remaining time first, in Python: at every scheduling point the
jobs whose lease ended and the queued jobs are granted leases in order of
their remaining run time at their best rate, shortest first, each gang
placed as the C++ placers do (consolidated, fastest type with room). Later
jobs fill what the shorter ones leave (backfilling); a running job that is
not granted again at its lease end is preempted.
"""
import fairgpu


class Srtf:
    # A short lease: SRTF preempts at lease ends only.
    options = [
        fairgpu.Option("lease", 300.0, "lease term in seconds", min=0, min_open=True),
    ]

    def schedule(self, state):
        rnd = state.gang_round()
        if not rnd.worth_planning():
            return None
        lease_end = state.now + self.options["lease"]

        def remaining_s(i):
            job = state.job(i)
            best = max(job.rate_best)
            return job.remaining / best if best > 0 else float("inf")

        for i in sorted(rnd.decidable(), key=lambda i: (remaining_s(i), i)):
            rnd.grant(i, lease_end)
        return rnd.plan()
