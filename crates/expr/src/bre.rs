//! bcftools compiles `~` patterns as POSIX *basic* regular expressions (`regcomp`
//! without `REG_EXTENDED`), where `+ ? | ( ) { }` are plain characters and `\( \) \{
//! \} \|` are the operators. This translates one into the `regex` crate's syntax, so a
//! pattern means what it means to bcftools; a trailing `/i` ignores case.

/// The `regex` crate's pattern for the POSIX basic pattern `bre`, and whether case is
/// ignored (a trailing `/i` not preceded by `\`).
pub fn translate(bre: &str) -> Result<(String, bool), String> {
    let (bre, icase) = match bre.strip_suffix("/i") {
        Some(p) if !p.ends_with('\\') && !p.is_empty() => (p, true),
        _ => (bre, false),
    };
    let c: Vec<char> = bre.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    // Whether a `*` here would be literal (at the start of the pattern or a group).
    let mut at_start = true;
    while i < c.len() {
        let ch = c[i];
        match ch {
            '\\' => {
                let Some(&n) = c.get(i + 1) else {
                    return Err("a pattern that ends in `\\`".into());
                };
                i += 2;
                match n {
                    '(' => {
                        out.push('(');
                        at_start = true;
                        continue;
                    }
                    ')' => out.push(')'),
                    '{' => out.push('{'),
                    '}' => out.push('}'),
                    '|' => {
                        out.push('|');
                        at_start = true;
                        continue;
                    }
                    '+' => out.push('+'),
                    '?' => out.push('?'),
                    '1'..='9' => return Err("back-references (`\\1`) are not supported".into()),
                    '<' | '>' | 'b' | 'B' | 'w' | 'W' | 's' | 'S' | '`' | '\'' => {
                        return Err(format!("`\\{n}` is not supported"))
                    }
                    // Any other escaped character stands for itself.
                    _ => out.push_str(&regex_escape(n)),
                }
            }
            '[' => {
                // A bracket expression, copied with `]` first and `\` literal inside.
                let mut j = i + 1;
                let mut class = String::from("[");
                if c.get(j) == Some(&'^') {
                    class.push('^');
                    j += 1;
                }
                if c.get(j) == Some(&']') {
                    class.push_str("\\]");
                    j += 1;
                }
                let mut closed = false;
                while j < c.len() {
                    match c[j] {
                        ']' => {
                            closed = true;
                            j += 1;
                            break;
                        }
                        '[' if matches!(c.get(j + 1), Some(':' | '.' | '=')) => {
                            let kind = c[j + 1];
                            let end = (j + 2..c.len().saturating_sub(1))
                                .find(|&k| c[k] == kind && c[k + 1] == ']')
                                .ok_or("an unclosed `[:` class")?;
                            if kind != ':' {
                                return Err(
                                    "collating elements (`[.` `[=`) are not supported".into()
                                );
                            }
                            class.extend(&c[j..end + 2]);
                            j = end + 2;
                        }
                        '\\' | '[' | '&' | '~' => {
                            class.push('\\');
                            class.push(c[j]);
                            j += 1;
                        }
                        x => {
                            class.push(x);
                            j += 1;
                        }
                    }
                }
                if !closed {
                    return Err("a `[` that is never closed".into());
                }
                class.push(']');
                out.push_str(&class);
                i = j;
            }
            '*' if at_start => {
                out.push_str("\\*");
                i += 1;
            }
            '^' if !at_start => {
                out.push_str("\\^");
                i += 1;
            }
            '$' if i + 1 < c.len()
                && !(c[i + 1] == '\\' && matches!(c.get(i + 2), Some(')' | '|'))) =>
            {
                out.push_str("\\$");
                i += 1;
            }
            '+' | '?' | '(' | ')' | '{' | '}' | '|' => {
                out.push('\\');
                out.push(ch);
                i += 1;
            }
            _ => {
                out.push(ch);
                i += 1;
            }
        }
        at_start = ch == '^' && out.len() == 1;
    }
    Ok((out, icase))
}

fn regex_escape(c: char) -> String {
    let mut s = String::new();
    if "\\.+*?()|[]{}^$#&-~ ".contains(c) {
        s.push('\\');
    }
    s.push(c);
    s
}

#[cfg(test)]
mod tests {
    use super::translate;

    #[test]
    fn basic_operators_become_plain_and_escaped_ones_operators() {
        assert_eq!(translate("a+b").unwrap(), ("a\\+b".into(), false));
        assert_eq!(
            translate("\\(ab\\)\\{2\\}").unwrap(),
            ("(ab){2}".into(), false)
        );
        assert_eq!(translate("^*x").unwrap().0, "^\\*x");
        assert_eq!(
            translate("missense.*/i").unwrap(),
            ("missense.*".into(), true)
        );
        assert_eq!(translate("x$").unwrap().0, "x$");
        assert_eq!(translate("a$b").unwrap().0, "a\\$b");
        assert_eq!(translate("[[:digit:]]\\.").unwrap().0, "[[:digit:]]\\.");
        assert_eq!(translate("[]a]").unwrap().0, "[\\]a]");
        assert!(translate("\\1").is_err());
    }
}
