"""A test LMS on loopback, built on the `lti1p3platform` package (a platform we did not write)."""
