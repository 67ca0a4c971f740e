"""`make demo`, room by room: phase 1 (cli: discovery and the PromQL), phase 2 (served: the API
through the stand-in's aggregation), phase 3 (autoscale, autoscale_record, live, report: the
controller closing the loop, drawn live and as an HTML page), and config.yaml, the demo's rules.

Non-goals: starting processes by hand (hack.stack does), asserting anything (the tests do).
"""
