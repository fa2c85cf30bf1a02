"""What the messages mean, as data taken from the programs that print them: error signatures, NCCL's WARN sites,
c10d / torchrun / gloo message classes, Xid and exit-code meanings, a site's own signature rows, scope's own
log prefixes. Readers and reasoning look things up here; nothing here reads a file of the run."""
