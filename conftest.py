"""Names every doctest can use, so examples read as a user would write them."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp


@pytest.fixture(autouse=True)
def _doctest_names(doctest_namespace):
    doctest_namespace.update(np=np, fgrad=fgrad, fnp=fnp)
