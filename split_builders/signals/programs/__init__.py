"""Program structure: atoms, compounds, divergences and wug-word lexical variants."""
