"""Looking at tokenizers: the token view (terminal and HTML), side-by-side comparison, the audit
for glitch tokens, and the plain-text table they print with. Used by the CLI; no command-line
parsing here."""
