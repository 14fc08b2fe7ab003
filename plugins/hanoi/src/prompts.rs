//! The paper's prompts for Tower of Hanoi (The Illusion of Thinking,
//! appendix A.1.1) as its authors wrote them, the instance filled in (what
//! differs from the appendix's text, and why: docs/games.md).

use ludus_sdk::puzzle_prompts::Paper;

pub const PAPER: Paper = Paper {
    puzzle: "Tower of Hanoi",
    system: SYSTEM,
    user,
    n: (1, 30),
    n_means: "the number of disks",
    k_means: None,
    moves_format: "moves = [[disk id, from peg, to peg], ...]",
};

const SYSTEM: &str = "You are a helpful assistant. Solve this puzzle for me.
There are three pegs and n disks of different sizes stacked on the first peg. The disks are numbered from 1 (smallest) to n (largest). Disk moves in this puzzle should follow:
1. Only one disk can be moved at a time.
2. Each move consists of taking the upper disk from one stack and placing it on top of another stack.
3. A larger disk may not be placed on top of a smaller disk.
The goal is to move the entire stack to the third peg.
Example: With 3 disks numbered 1 (smallest), 2, and 3 (largest), the initial state is [[3, 2, 1], [], []], and a solution might be:
moves = [[1, 0, 2], [2, 0, 1], [1, 2, 1], [3, 0, 2], [1, 1, 0], [2, 1, 2], [1, 0, 2]]
This means: Move disk 1 from peg 0 to peg 2, then move disk 2 from peg 0 to peg 1, and so on.
Requirements:
• When exploring potential solutions in your thinking process, always include the corresponding complete list of moves.
• The positions are 0-indexed (the leftmost peg is 0).
• Ensure your final answer includes the complete list of moves in the format:
moves = [[disk id, from peg, to peg], ...]";

/// `N (bottom), …, 2, 1 (top)`: the paper's `$N$ (bottom), . . . 2, 1 (top)` with the disks written out.
fn tower(n: u32) -> String {
    match n {
        1 => "1 (bottom, top)".into(),
        _ => {
            let middle: Vec<String> = (2..n).rev().map(|d| d.to_string()).collect();
            let middle = if middle.is_empty() { String::new() } else { format!("{}, ", middle.join(", ")) };
            format!("{n} (bottom), {middle}1 (top)")
        }
    }
}

fn user(n: u32, _k: Option<u32>) -> Result<String, String> {
    Ok(format!(
        "I have a puzzle with {n} disks of different sizes with
Initial configuration:
• Peg 0: {tower}
• Peg 1: (empty)
• Peg 2: (empty)
Goal configuration:
• Peg 0: (empty)
• Peg 1: (empty)
• Peg 2: {tower}
Rules:
• Only one disk can be moved at a time.
• Only the top disk from any stack can be moved.
• A larger disk may not be placed on top of a smaller disk.
Find the sequence of moves to transform the initial configuration into the goal configuration.",
        tower = tower(n)
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_instance_is_written_out() {
        let u = super::user(4, None).unwrap();
        assert!(u.starts_with("I have a puzzle with 4 disks"), "{u}");
        assert!(u.contains("• Peg 0: 4 (bottom), 3, 2, 1 (top)\n• Peg 1: (empty)"), "{u}");
        assert!(u.contains("• Peg 2: 4 (bottom), 3, 2, 1 (top)\nRules:"), "{u}");
        assert_eq!(super::tower(2), "2 (bottom), 1 (top)");
    }
}
