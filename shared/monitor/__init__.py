"""The convergence monitor, read-only over the journals: the residual series per plan pass (`series`), the fit of log q
and the diagnosis (`fit`), and the plot people read (`plot`)."""
