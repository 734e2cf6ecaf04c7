"""What a code part's message may say of the student's program, checked against its source: each line
it cites holds the construct the sentence names (and the text it quotes), each count of backward()
calls is the source's, and each op it names is one the program has. Used by the words audit
(tests/test_code_words_audit.py); every problem is returned as a sentence saying what is untrue."""

from __future__ import annotations

import ast
import re

_LINE_LIST = r"(\d+)(?:(?:, | and )(\d+))*"
_CITED = re.compile(r"\b[Ll]ines? (\d+(?:(?:, | and )\d+)*)(?: \(`([^`]*)`\))?")
_COUNT = re.compile(r"calls backward\(\) (once|twice|(\d+) times)")
_COUNT_OF = re.compile(r"its (\d+) backward\(\) calls")
_PATH = re.compile(r"[\w.\[\]]+(?: → [\w.\[\]]+)+")
_EDGE = re.compile(r"the edge ([\w.]+) → ([\w.]+)")
_WORDS = {"once": 1, "twice": 2}
_METHOD = re.compile(r"\w+\.(?:backward|forward)\b(?!\()")

# The constructs a sentence may name, each with what its line must hold.
_CONSTRUCTS: dict[str, tuple[str, ...]] = {
    "backward(": ("backward(",),
    "zero_grad": ("zero_grad",),
    "zeroes": ("zero_", "zero_grad", "= None", "zeros"),
    "resets": ("zero_", "zero_grad", "= None", "zeros", ".grad =", ".grad.", "torch.tensor("),
    "sets": (".grad = None", "= None"),
    "replaces": (".grad =",),
    "zero_()": ("zero_",),
    "detach": ("detach",),
    ".data": (".data",),
    "no_grad": ("no_grad",),
    "clone()": ("clone",),
    "retain_graph": ("retain_graph", "backward("),
    "requires_grad": ("requires_grad", "torch.tensor", "zeros", "ones", "randn", "empty", "full"),
    "register_hook": ("register_hook",),
    "autograd.grad": ("autograd.grad", "grad("),
    ".item()": (".item()", "float(", "math.", "torch.tensor("),
}

# An op of the reference's graph, named in a message, and what in the student's source makes one. Ops a
# program makes without writing them (a broadcast's expand, an index's select) are not checked.
_OP_SPELLINGS: dict[str, tuple[str, ...]] = {
    "mul": (r"(?<!\*)\*(?!\*)", "mul"), "div": ("/", "div"), "add": ("+", "add", "sum("), "sub": ("-", "sub"),
    "neg": ("-", "neg"), "pow": ("**", "pow", "square"), "mm": ("@", "mm", "matmul", "linear"),
    "mv": ("@", "mv", "matmul", "linear"), "dot": ("@", "dot", "matmul"), "matmul": ("@", "matmul"),
    "addmm": ("@", "linear", "addmm"), "sum": ("sum",), "mean": ("mean",), "exp": ("exp",),
    "log": ("log",), "tanh": ("tanh",), "sigmoid": ("sigmoid",), "relu": ("relu", "clamp"),
    "detach": ("detach", ".data", "no_grad"), "clone": ("clone",), "sqrt": ("sqrt", "** 0.5", "**0.5"),
    "abs": ("abs",), "clamp": ("clamp",), "sin": ("sin",), "cos": ("cos",), "softmax": ("softmax",),
    "log_softmax": ("log_softmax", "cross_entropy"), "stack": ("stack",), "cat": ("cat",),
    "norm": ("norm",), "linalg_vector_norm": ("norm",), "max": ("max",), "min": ("min",),
    "where": ("where",),
}


def source_lines(source: str) -> list[str]:
    return source.splitlines()


def backward_count(source: str) -> int | None:
    """The backward() calls the source makes, when no loop or function repeats one (else None)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    count = 0
    repeated = False

    def visit(node: ast.AST, inside: bool) -> None:
        nonlocal count, repeated
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "backward":
            count += 1
            repeated = repeated or inside
        for child in ast.iter_child_nodes(node):
            visit(child, inside or isinstance(node, (ast.For, ast.While, ast.FunctionDef, ast.Lambda,
                                                      ast.ListComp, ast.GeneratorExp, ast.ClassDef)))

    visit(tree, False)
    return None if repeated else count


def untrue_words(message: str, source: str) -> list[str]:
    lines = source_lines(source)
    problems: list[str] = []
    for sentence in re.split(r"(?<=[.:;])\s+(?=[A-Z(])", message):
        problems += _cited_lines(sentence, lines)
        problems += _counts(sentence, source)
    problems += _ops(message, source)
    return problems


def _cited_lines(sentence: str, lines: list[str]) -> list[str]:
    problems = []
    for found in _CITED.finditer(sentence):
        numbers = [int(n) for n in re.findall(r"\d+", found.group(1))]
        for number in numbers:
            if not 1 <= number <= len(lines):
                problems.append(f"cites line {number}, outside the program's {len(lines)} lines: {sentence!r}")
                continue
        quoted = found.group(2)
        if quoted is not None and len(numbers) == 1 and 1 <= numbers[0] <= len(lines):
            text = lines[numbers[0] - 1].strip().replace("`", "'")
            if not (quoted == text or (quoted.endswith("…") and text.startswith(quoted[:-1]))):
                problems.append(f"quotes line {numbers[0]} as {quoted!r}, but it is {text!r}")
        held = [lines[n - 1] for n in numbers if 1 <= n <= len(lines)]
        construct = _named_construct(sentence, found.start(), found.end())
        if construct is not None and held and not any(
                any(token in line for token in _CONSTRUCTS[construct]) for line in held):
            problems.append(f"says line(s) {numbers} hold {construct}, but they are {held!r}: {sentence!r}")
    return problems


def _named_construct(sentence: str, start: int, end: int) -> str | None:
    """The construct the clause citing a line names: the nearest one before the citation within its clause, or
    right after it (`line 4 (…) zeroes x.grad`)."""
    clause_start = max(sentence.rfind(sep, 0, start) for sep in (", ", ": ", "; ", " (")) if start else 0
    # `MyClamp.backward` names a custom Function's method (its lines are the method's), not a backward() call
    before = _METHOD.sub("", sentence[max(clause_start, 0):start])
    after = sentence[end:end + 25]  # the verb right after the citation (`line 4 (…) zeroes x.grad`)
    after = after.split(",")[0].split(":")[0]
    best: tuple[int, str] | None = None
    for construct in _CONSTRUCTS:
        key = construct.rstrip("(")
        at = before.rfind(key)
        if at >= 0 and (best is None or at > best[0]):
            best = (at, construct)
    if best is not None:
        return best[1]
    placed = sorted((after.find(construct.rstrip("(")), construct) for construct in _CONSTRUCTS
                    if after.find(construct.rstrip("(")) >= 0)
    return placed[0][1] if placed else None


def _counts(sentence: str, source: str) -> list[str]:
    problems = []
    count = backward_count(source)
    if count is None:
        return problems
    yours = not any(word in sentence for word in ("this exercise calls", "the exercise calls"))
    for found in _COUNT.finditer(sentence):
        before = sentence[:found.start()]
        if "exercise" in before[-30:] or not yours and "Your program" not in before[-40:]:
            continue
        said = _WORDS.get(found.group(1)) or int(found.group(2))
        if said != count:
            problems.append(f"says the program calls backward() {found.group(1)}; its source does {count}: "
                            f"{sentence!r}")
    for found in _COUNT_OF.finditer(sentence):
        if int(found.group(1)) != count:
            problems.append(f"counts {found.group(1)} backward() calls; the source has {count}: {sentence!r}")
    return problems


def _ops(message: str, source: str) -> list[str]:
    """Each op of a path or an edge the message names is one the student's program has."""
    named: set[str] = set()
    for path in _PATH.findall(message):
        named.update(path.split(" → ")[1:-1])
    for edge in _EDGE.findall(message):
        named.update(edge)
    code = "\n".join(line.split("#")[0] for line in source.splitlines())
    problems = []
    for op in sorted(named):
        spellings = _OP_SPELLINGS.get(op)
        if spellings is not None and not any(spelling in code or spelling.startswith("(?") and re.search(spelling, code)
                                             for spelling in spellings):
            problems.append(f"names the op {op}, which the program does not have: {message[:200]!r}")
    return problems
