"""Wrong local derivatives as mutations of one autograd node's
vector-Jacobian product, evaluated by re-running the backward pass with that
node replaced (needs torch: runs in the sandbox, at analysis time)."""
