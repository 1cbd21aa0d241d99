//! The expression's text as a tree: tokens (numbers, quoted strings, names with their
//! `[...]` subscripts, operators), then operators by bcftools' precedence — `|`/`||`
//! lowest, then `&`/`&&`, comparisons and `~`/`!~`, `+`/`-`, `*`/`/`/`%` — each level
//! grouping to the right, as bcftools' operator stack does (`10-2-3` is 11 there).

use crate::Error;

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `||`: at least one side true; a sample passes when the site does.
    OrOr,
    /// `|`: at least one side true, sample by sample.
    Or,
    /// `&&`: both sides true, each in any sample.
    AndAnd,
    /// `&`: both sides true within one sample.
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Like,
    NotLike,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

impl Op {
    fn precedence(self) -> u8 {
        match self {
            Op::OrOr | Op::Or => 2,
            Op::AndAnd | Op::And => 3,
            Op::Eq | Op::Ne | Op::Lt | Op::Le | Op::Gt | Op::Ge | Op::Like | Op::NotLike => 5,
            Op::Add | Op::Sub => 6,
            Op::Mul | Op::Div | Op::Mod => 7,
        }
    }

    /// Whether it compares (its result is a truth value).
    pub fn compares(self) -> bool {
        self.precedence() == 5
    }

    /// Whether it is arithmetic.
    pub fn arithmetic(self) -> bool {
        self.precedence() >= 6
    }
}

/// A node of the tree; `at` is the byte offset of its text in the expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Num(f64, usize),
    Str(String, usize),
    /// A name (`INFO/DP`, `QUAL`, `GT`) and its subscript text, if any.
    Name(String, Option<String>, usize),
    Call(String, Vec<Node>, usize),
    Neg(Box<Node>, usize),
    Bin(Op, Box<Node>, Box<Node>, usize),
}

impl Node {
    pub fn at(&self) -> usize {
        match self {
            Node::Num(_, a)
            | Node::Str(_, a)
            | Node::Name(_, _, a)
            | Node::Call(_, _, a)
            | Node::Neg(_, a)
            | Node::Bin(_, _, _, a) => *a,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Str(String),
    Name(String, Option<String>),
    Open,
    Close,
    Comma,
    Op(Op),
}

fn name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.')
}

fn lex(text: &str) -> Result<Vec<(Tok, usize)>, Error> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let err = |at: usize, msg: String| Error::new(text, at, msg);
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let at = i;
        let two = |s: &[u8]| b[i..].starts_with(s);
        let (tok, len) = if two(b"||") {
            (Tok::Op(Op::OrOr), 2)
        } else if two(b"&&") {
            (Tok::Op(Op::AndAnd), 2)
        } else if two(b"==") {
            (Tok::Op(Op::Eq), 2)
        } else if two(b"!=") {
            (Tok::Op(Op::Ne), 2)
        } else if two(b"!~") {
            (Tok::Op(Op::NotLike), 2)
        } else if two(b"<=") {
            (Tok::Op(Op::Le), 2)
        } else if two(b">=") {
            (Tok::Op(Op::Ge), 2)
        } else {
            match c {
                b'|' => (Tok::Op(Op::Or), 1),
                b'&' => (Tok::Op(Op::And), 1),
                b'=' => (Tok::Op(Op::Eq), 1),
                b'<' => (Tok::Op(Op::Lt), 1),
                b'>' => (Tok::Op(Op::Gt), 1),
                b'~' => (Tok::Op(Op::Like), 1),
                b'+' => (Tok::Op(Op::Add), 1),
                b'-' => (Tok::Op(Op::Sub), 1),
                b'*' => (Tok::Op(Op::Mul), 1),
                b'/' => (Tok::Op(Op::Div), 1),
                b'%' => (Tok::Op(Op::Mod), 1),
                b'(' => (Tok::Open, 1),
                b')' => (Tok::Close, 1),
                b',' => (Tok::Comma, 1),
                b'"' | b'\'' => {
                    let end = b[i + 1..]
                        .iter()
                        .position(|&x| x == c)
                        .ok_or_else(|| err(at, "a string that is never closed".into()))?;
                    let s = &text[i + 1..i + 1 + end];
                    (Tok::Str(s.to_string()), end + 2)
                }
                b'@' => return Err(err(at, "@file lists are not supported yet".into())),
                b'!' => return Err(err(at, "`!` only begins `!=` or `!~`".into())),
                _ if name_char(c) => {
                    let mut j = i;
                    while j < b.len() && name_char(b[j]) {
                        j += 1;
                    }
                    // `/` belongs to a name only after INFO, FORMAT or FMT; else it divides.
                    if j < b.len()
                        && b[j] == b'/'
                        && matches!(&text[i..j], "INFO" | "FORMAT" | "FMT")
                    {
                        j += 1;
                        while j < b.len() && name_char(b[j]) {
                            j += 1;
                        }
                    }
                    let word = &text[i..j];
                    let numeric = c.is_ascii_digit() || (c == b'.' && word.len() > 1);
                    if numeric {
                        // 1e-4: the exponent's sign is part of the number.
                        let mut k = j;
                        if (b[k - 1] == b'e' || b[k - 1] == b'E')
                            && k < b.len()
                            && (b[k] == b'-' || b[k] == b'+')
                        {
                            k += 1;
                            while k < b.len() && b[k].is_ascii_digit() {
                                k += 1;
                            }
                        }
                        let v: f64 = text[i..k]
                            .parse()
                            .map_err(|_| err(at, format!("`{}` is not a number", &text[i..k])))?;
                        (Tok::Num(v), k - i)
                    } else if word == "." {
                        (Tok::Str(".".into()), 1)
                    } else {
                        let mut len = j - i;
                        let mut sub = None;
                        if j < b.len() && b[j] == b'[' {
                            let close =
                                b[j..].iter().position(|&x| x == b']').ok_or_else(|| {
                                    err(j, "a subscript `[` that is never closed".into())
                                })?;
                            sub = Some(text[j + 1..j + close].trim().to_string());
                            len += close + 1;
                        }
                        (Tok::Name(word.to_string(), sub), len)
                    }
                }
                _ => {
                    let ch = text[i..].chars().next().unwrap_or('?');
                    return Err(err(at, format!("unexpected `{ch}`")));
                }
            }
        };
        out.push((tok, at));
        i += len;
    }
    Ok(out)
}

struct Parser<'a> {
    text: &'a str,
    toks: Vec<(Tok, usize)>,
    i: usize,
    /// Nesting so far: a crafted expression must not exhaust the stack.
    depth: usize,
    /// Binary operators so far (the tree's depth is at most this).
    operators: usize,
}

/// Binary operators beyond this are refused: evaluation recurses once per operator of
/// a chain (an OR-list of a thousand tests is well within).
const MAX_OPERATORS: usize = 1024;

/// Parentheses, calls and operands nested deeper than this are refused.
const MAX_DEPTH: usize = 256;

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i).map(|t| &t.0)
    }

    fn here(&self) -> usize {
        self.toks.get(self.i).map_or(self.text.len(), |t| t.1)
    }

    fn err(&self, at: usize, msg: impl Into<String>) -> Error {
        Error::new(self.text, at, msg.into())
    }

    fn expr(&mut self, min: u8) -> Result<Node, Error> {
        let at = self.here();
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err(at, format!("nested more than {MAX_DEPTH} deep")));
        }
        let r = self.expr_inner(min);
        self.depth -= 1;
        r
    }

    fn expr_inner(&mut self, min: u8) -> Result<Node, Error> {
        let first = self.primary()?;
        self.climb(first, min)
    }

    /// Operators of precedence `min` and up after `lhs`. A run of operators of one
    /// precedence (`a || b || c`) is read in a loop and grouped to the right, as
    /// bcftools' stack does, so a long OR-list does not nest the parser.
    fn climb(&mut self, mut lhs: Node, min: u8) -> Result<Node, Error> {
        while let Some(Tok::Op(op)) = self.peek() {
            let p = op.precedence();
            if p < min {
                break;
            }
            let mut operands = vec![lhs];
            let mut ops = Vec::new();
            while let Some(Tok::Op(op)) = self.peek() {
                if op.precedence() != p {
                    break;
                }
                ops.push((*op, self.here()));
                self.i += 1;
                self.operators += 1;
                if self.operators > MAX_OPERATORS {
                    return Err(
                        self.err(self.here(), format!("more than {MAX_OPERATORS} operators"))
                    );
                }
                let x = self.primary()?;
                operands.push(self.climb(x, p + 1)?);
            }
            let mut acc = operands.pop().expect("an operand per operator, and one");
            while let Some((op, at)) = ops.pop() {
                let l = operands.pop().expect("an operand per operator");
                acc = Node::Bin(op, Box::new(l), Box::new(acc), at);
            }
            lhs = acc;
        }
        Ok(lhs)
    }

    fn primary(&mut self) -> Result<Node, Error> {
        let at = self.here();
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err(at, format!("nested more than {MAX_DEPTH} deep")));
        }
        let r = self.primary_inner(at);
        self.depth -= 1;
        r
    }

    fn primary_inner(&mut self, at: usize) -> Result<Node, Error> {
        let Some((tok, _)) = self.toks.get(self.i).cloned() else {
            return Err(self.err(at, "the expression ends where a value is expected"));
        };
        self.i += 1;
        match tok {
            Tok::Num(v) => Ok(Node::Num(v, at)),
            Tok::Str(s) => Ok(Node::Str(s, at)),
            Tok::Op(Op::Sub) => Ok(Node::Neg(Box::new(self.primary()?), at)),
            Tok::Open => {
                let e = self.expr(0)?;
                match self.peek() {
                    Some(Tok::Close) => {
                        self.i += 1;
                        Ok(e)
                    }
                    _ => Err(self.err(self.here(), "a `(` that is never closed")),
                }
            }
            Tok::Name(name, sub) => {
                if self.peek() != Some(&Tok::Open) {
                    return Ok(Node::Name(name, sub, at));
                }
                if sub.is_some() {
                    return Err(self.err(at, format!("`{name}[...]` cannot be called")));
                }
                self.i += 1;
                let mut args = Vec::new();
                if self.peek() == Some(&Tok::Close) {
                    self.i += 1;
                    return Ok(Node::Call(name, args, at));
                }
                loop {
                    args.push(self.expr(0)?);
                    match self.peek() {
                        Some(Tok::Comma) => self.i += 1,
                        Some(Tok::Close) => {
                            self.i += 1;
                            return Ok(Node::Call(name, args, at));
                        }
                        _ => {
                            return Err(self.err(self.here(), format!("`{name}(` is never closed")))
                        }
                    }
                }
            }
            Tok::Close => Err(self.err(at, "unexpected `)`")),
            Tok::Comma => Err(self.err(at, "unexpected `,`")),
            Tok::Op(_) => Err(self.err(at, "an operator where a value is expected")),
        }
    }
}

/// Parses `text` into a tree.
pub fn parse(text: &str) -> Result<Node, Error> {
    let toks = lex(text)?;
    if toks.is_empty() {
        return Err(Error::new(text, 0, "an empty expression".into()));
    }
    let mut p = Parser {
        text,
        toks,
        i: 0,
        depth: 0,
        operators: 0,
    };
    let e = p.expr(0)?;
    if p.i < p.toks.len() {
        return Err(p.err(p.here(), "unexpected text after a complete expression"));
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(n: &Node) -> String {
        match n {
            Node::Num(v, _) => format!("{v}"),
            Node::Str(s, _) => format!("{s:?}"),
            Node::Name(n, Some(s), _) => format!("{n}[{s}]"),
            Node::Name(n, None, _) => n.clone(),
            Node::Call(f, a, _) => {
                format!("{f}({})", a.iter().map(show).collect::<Vec<_>>().join(","))
            }
            Node::Neg(x, _) => format!("-{}", show(x)),
            Node::Bin(op, l, r, _) => format!("({} {op:?} {})", show(l), show(r)),
        }
    }

    #[test]
    fn precedence_and_right_grouping() {
        let p = |s: &str| show(&parse(s).unwrap());
        assert_eq!(p("10-2-3"), "(10 Sub (2 Sub 3))");
        assert_eq!(p("a*b+c"), "((a Mul b) Add c)");
        assert_eq!(
            p("QUAL>10 || FMT/GQ>10 & DP<3"),
            "((QUAL Gt 10) OrOr ((FMT/GQ Gt 10) And (DP Lt 3)))"
        );
        assert_eq!(p("AD[0:1]>=1e-4"), "(AD[0:1] Ge 0.0001)");
        assert_eq!(p(r#"COUNT(GT="het")>2"#), r#"(COUNT((GT Eq "het")) Gt 2)"#);
        assert_eq!(p("DP=."), r#"(DP Eq ".")"#);
        assert_eq!(p("INFO/DP/INFO/AN>15"), "((INFO/DP Div INFO/AN) Gt 15)");
    }

    #[test]
    fn errors_name_the_column() {
        let e = parse("DP>>3").unwrap_err();
        assert_eq!(e.at, 3, "{e}");
        let e = parse("(DP>3").unwrap_err();
        assert!(e.to_string().contains("never closed"), "{e}");
        let e = parse("DP>3 QUAL").unwrap_err();
        assert_eq!(e.at, 5);
        assert!(parse("ID=@list").is_err());
        // Deep nesting is refused, not a stack overflow; right-grouped chains too.
        let deep = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(parse(&deep).unwrap_err().msg.contains("nested more than"));
        let chain = vec!["1"; 100_000].join("-");
        assert!(parse(&chain).unwrap_err().msg.contains("operators"));
        let or_list: Vec<String> = (0..500).map(|i| format!("POS={i}")).collect();
        assert!(parse(&or_list.join("||")).is_ok());
        assert!(parse(&"-".repeat(100_000)).is_err());
        assert!(parse("").is_err());
    }
}
