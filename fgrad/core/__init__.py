"""The machinery: op declaration, traces and graphs. New ops go in ``fgrad/ops``, never here."""
