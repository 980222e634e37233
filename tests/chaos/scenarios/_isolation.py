"""How long after an isolation begins a window may assume it is in force.

Isolating a zone cuts some twenty links, one Toxiproxy API call each, and a schedule's
inject moment is when the first call goes out. On a quiet machine the last link is cut
well within a second; in a CI run with one core kept busy it took 1.5 s, and zone a's
producer was still acknowledged over its not-yet-cut link in between (S9: 43 sends
acknowledged 1.0-1.5 s after the inject began, its first transport error at 1.53 s).
A window that says "nothing gets through while isolated" therefore starts this long
after the inject: the busy figure doubled.
"""

from __future__ import annotations

ISOLATION_IN_FORCE_S = 3.0
