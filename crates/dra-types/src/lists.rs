//! Room in lists that mostly hold one element.
//!
//! A `Vec`'s first push makes room for four elements (of up to a kilobyte each). Most lists a
//! simulation builds per pod or per claim stay at one element (a pod's claim, a claim's
//! reservation, a node condition), and in a large simulation the three empty slots of each
//! added up to tens of megabytes of memory that is allocated, never used, and still costs
//! its first touch.

/// Makes room for exactly one element in an empty list; does nothing to a non-empty one, which
/// then grows as usual (doubling), so a long list does not reallocate per element. Call it
/// before the push or insert.
pub fn reserve_first<T>(list: &mut Vec<T>) {
    // A new list rather than `reserve_exact(1)`: that takes the general path of growing a
    // list, a few times the instructions of one allocation, and lists are made per pod.
    if list.capacity() == 0 {
        *list = Vec::with_capacity(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_element_gets_room_for_one_and_later_ones_grow_as_usual() {
        let mut list: Vec<u64> = Vec::new();
        reserve_first(&mut list);
        list.push(1);
        assert_eq!(list.capacity(), 1);
        for i in 2..=5 {
            reserve_first(&mut list);
            list.push(i);
        }
        assert_eq!(list, [1, 2, 3, 4, 5]);
        // Doubling from one: 4 (the minimum a growing Vec takes), then 8.
        assert_eq!(list.capacity(), 8);
    }
}
