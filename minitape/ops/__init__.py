"""minitape's operations, grouped by kind; each module holds forwards and their gradients."""
