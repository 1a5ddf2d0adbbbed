"""float(), complex(), .item() and .tolist() of a value being differentiated raise, as JAX's
ConcretizationTypeError: the Python number would silently drop the derivative.

int(), bool() and comparisons stay allowed: they are piecewise constant (derivative 0), so
Python control flow works under grad and jvp, as in JAX.
"""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.errors import ConcretizationError


@pytest.mark.parametrize("convert", [float, complex, lambda x: x.item(), lambda x: x.tolist()],
                         ids=["float", "complex", "item", "tolist"])
@pytest.mark.parametrize("mode", ["grad", "jvp", "jacrev", "grad_of_grad"])
def test_python_numbers_of_differentiated_values_raise(convert, mode):
    def f(x):
        return convert(x) * x

    run = {
        "grad": lambda: fgrad.grad(f)(3.0),
        "jvp": lambda: fgrad.jvp(f, (3.0,), (1.0,)),
        "jacrev": lambda: fgrad.jacrev(lambda v: f(v[0]) * v)(fnp.ones(2)),
        "grad_of_grad": lambda: fgrad.grad(fgrad.grad(lambda x: x * f(x)))(3.0),
    }[mode]
    with pytest.raises(ConcretizationError, match="drop its derivative"):
        run()


def test_control_flow_int_and_constants_still_work():
    def f(x):
        k = int(x)  # piecewise constant
        if x > 0:  # bool of a comparison
            return k * x + float(fgrad.stop_gradient(x)) * x
        return -x

    assert float(fgrad.grad(f)(3.5)) == pytest.approx(3 + 3.5)
    assert float(fgrad.grad(f)(-2.0)) == -1.0
    # outside transforms and under vmap the conversions are unchanged
    assert float(fnp.asarray(2.0)) == 2.0
    np.testing.assert_allclose(np.asarray(fgrad.vmap(lambda x: x * 2)(fnp.ones(3))), 2.0)


def test_the_error_names_the_conversion_and_the_remedy():
    with pytest.raises(ConcretizationError, match=r"float\(\) of a value being differentiated "
                       r"\(ReverseTracer f64\[\]\).*stop_gradient"):
        fgrad.grad(lambda x: float(x) * x)(1.0)
