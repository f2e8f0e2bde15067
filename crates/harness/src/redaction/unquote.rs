//! A reading of a command line with shell quoting removed, each byte mapped back to the text it came
//! from: `ghp_abc''def`, `"sk-"'rest'`, `\`-escapes and `$'\x41'` read as the word the shell passes on,
//! so a secret split by quotes is seen. Character-level: no parsing, no expansion, no shell assumed
//! beyond POSIX quoting and bash's `$'..'` / `$".."`.

/// The quote-removed text and where each of its bytes came from.
pub(super) struct Reading {
    pub(super) text: String,
    /// For each byte of `text`, the byte range of the original it was read from (a quote next to it is
    /// not included; an escape sequence is, whole).
    from: Vec<(usize, usize)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Plain,
    Single,
    Double,
    /// `$'...'`, with C escapes.
    Ansi,
}

impl Reading {
    /// The reading of `original`, or `None` when it has no quote or backslash (it reads as itself).
    pub(super) fn of(original: &str) -> Option<Reading> {
        if !original.bytes().any(|b| matches!(b, b'\'' | b'"' | b'\\')) {
            return None;
        }
        let chars: Vec<(usize, char)> = original.char_indices().collect();
        let end_of = |i: usize| chars.get(i + 1).map_or(original.len(), |(at, _)| *at);
        let mut reading = Reading { text: String::with_capacity(original.len()), from: Vec::new() };
        let mut state = State::Plain;
        let mut i = 0;
        while let Some(&(at, c)) = chars.get(i) {
            let next = chars.get(i + 1).map(|(_, n)| *n);
            match (state, c) {
                (State::Plain, '\'') => state = State::Single,
                (State::Plain, '"') | (State::Double, '"') => {
                    state = if state == State::Plain { State::Double } else { State::Plain }
                }
                (State::Plain, '$') if next == Some('\'') => {
                    state = State::Ansi;
                    i += 1;
                }
                (State::Plain, '$') if next == Some('"') => {
                    state = State::Double;
                    i += 1;
                }
                (State::Single | State::Ansi, '\'') => state = State::Plain,
                (State::Plain, '\\') | (State::Double, '\\')
                    if next.is_some_and(|n| {
                        state == State::Plain || matches!(n, '\\' | '"' | '$' | '`' | '\n')
                    }) =>
                {
                    // A backslash-newline is a line continuation: both go.
                    if let Some(n) = next.filter(|n| *n != '\n') {
                        reading.push(n, at, end_of(i + 1));
                    }
                    i += 1;
                }
                (State::Ansi, '\\') if next.is_some() => {
                    let (decoded, last) = ansi_escape(&chars, i + 1);
                    for d in decoded.into_iter().flatten() {
                        reading.push(d, at, end_of(last));
                    }
                    i = last;
                }
                _ => reading.push(c, at, end_of(i)),
            }
            i += 1;
        }
        Some(reading)
    }

    fn push(&mut self, c: char, start: usize, end: usize) {
        self.text.push(c);
        for _ in 0..c.len_utf8() {
            self.from.push((start, end));
        }
    }

    /// The original byte range a span of the reading was read from.
    pub(super) fn original_span(&self, (start, end): (usize, usize)) -> Option<(usize, usize)> {
        let first = self.from.get(start)?;
        let last = self.from.get(end.checked_sub(1)?)?;
        (start < end).then_some((first.0, last.1))
    }
}

/// Decodes the `$'..'` escape whose letter is at `chars[i]`: what it stands for (up to two chars: an
/// unknown escape stays a backslash and its letter) and the index of its last char.
fn ansi_escape(chars: &[(usize, char)], i: usize) -> ([Option<char>; 2], usize) {
    let Some(&(_, letter)) = chars.get(i) else { return ([Some('\\'), None], i - 1) };
    let simple = match letter {
        'n' => Some('\n'),
        't' => Some('\t'),
        'r' => Some('\r'),
        'a' => Some('\u{7}'),
        'b' => Some('\u{8}'),
        'e' | 'E' => Some('\u{1b}'),
        'f' => Some('\u{c}'),
        'v' => Some('\u{b}'),
        '\\' | '\'' | '"' | '?' => Some(letter),
        _ => None,
    };
    if simple.is_some() {
        return ([simple, None], i);
    }
    let (radix, max, first) = match letter {
        'x' => (16, 2, i + 1),
        'u' => (16, 4, i + 1),
        'U' => (16, 8, i + 1),
        '0'..='7' => (8, 3, i),
        'c' => {
            let control = chars.get(i + 1).map(|(_, x)| char::from((*x as u32 & 0x1f) as u8));
            return ([control, None], (i + 1).min(chars.len() - 1));
        }
        _ => return ([Some('\\'), Some(letter)], i),
    };
    let digits: String =
        chars.iter().skip(first).take(max).map(|(_, d)| *d).take_while(|d| d.is_digit(radix)).collect();
    if digits.is_empty() {
        return ([Some('\\'), Some(letter)], i);
    }
    let value = u32::from_str_radix(&digits, radix).unwrap_or(0xfffd);
    let decoded = if letter == 'u' || letter == 'U' || value < 0x80 {
        char::from_u32(value).unwrap_or('\u{fffd}')
    } else {
        '\u{fffd}' // a lone byte over 0x7f is not text by itself
    };
    ([Some(decoded), None], first + digits.chars().count() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> String {
        Reading::of(text).map_or_else(|| text.to_owned(), |r| r.text)
    }

    #[test]
    fn quotes_and_escapes_are_removed_as_the_shell_does() {
        let cases = [
            ("echo ghp_abc''def", "echo ghp_abcdef"),
            (r#"echo "sk-"'rest'"#, "echo sk-rest"),
            (r"echo a\b\ c", "echo ab c"),
            ("echo a\\\nb", "echo ab"),
            (r#"echo "a\"b\\c\d""#, r#"echo a"b\c\d"#),
            (r"echo $'sk-\x41\102\u0043\n'", "echo sk-ABC\n"),
            (r#"echo $"x"y"#, "echo xy"),
            (r"echo 'a\b'", r"echo a\b"),
            ("echo 'unterminated", "echo unterminated"),
            (r"echo $'\q\x'", r"echo \q\x"),
            ("plain text", "plain text"),
            ("é'ü'", "éü"),
        ];
        for (text, want) in cases {
            assert_eq!(read(text), want, "{text}");
        }
    }

    #[test]
    fn spans_map_back_to_the_original() {
        let text = "x 'ab'\"cd\"$'\\x65f' y";
        let r = Reading::of(text).unwrap();
        assert_eq!(r.text, "x abcdef y");
        let at = r.text.find("abcdef").unwrap();
        let (start, end) = r.original_span((at, at + 6)).unwrap();
        assert_eq!(&text[start..end], "ab'\"cd\"$'\\x65f");
        assert_eq!(r.original_span((3, 3)), None);
    }
}
