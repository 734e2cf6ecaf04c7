"""The harness that runs a student's code inside a sandbox job (with torch, or in a
process without it for by-hand parts) and reports plain values. Its source is sent
to the sandbox as the job; nothing here runs in the web process or a worker."""
