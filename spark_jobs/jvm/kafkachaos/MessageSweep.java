package kafkachaos;

import static org.apache.spark.sql.functions.col;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The reduce side of the reconciliation: every message judged in one sweep per shuffle
 * partition (spark_jobs/plan.py builds the input and says what each column means).
 *
 * <p>Why hand-written: after the one shuffle, Spark SQL needs two hash aggregations (by
 * message and position, then by message) and a window sorted by (block, partition, seq).
 * On two cores that came to about 30 CPU-seconds for 10M sends, most of it hash-map probes
 * that miss the cache and window sort comparisons that fall through to whole rows. Here
 * the rows of one task are copied into primitive arrays and sorted once by (PB, S); each
 * message's rows are then adjacent, and since the sweep visits a block's messages in seq
 * order, the window's "previous message of this producer in this partition" is simply
 * the last one seen per partition. A message with copies in several partitions of the
 * final log takes part in each of those partitions' order, by its first copy there. Only
 * the messages that leave the pass become Rows.
 *
 * <p>Input columns: PB (long), S (long), pos (long), f (int). Output: {@link #OUTPUT}.
 */
public final class MessageSweep {
  // Flags of an event row; must equal SEND ... POLL_OFF_LOG in plan.py (a test checks).
  public static final int SEND = 1, ACKED = 2, FAILED = 4, UNKNOWN = 8, LOG = 16, POLL = 32;
  public static final int ACK_OFF_LOG = 64, POLL_OFF_LOG = 128;

  private static final long NULL = Long.MIN_VALUE; // no value (SQL NULL); never a real position

  /** Where a never-sent record was seen, and whether it is the final log's record there. */
  public static final StructType SEEN_AT = schema("pos:long", "on_log:boolean");

  /** The columns of a message that leaves the pass, as plan.judged documents them. */
  public static final StructType OUTPUT = schema(
      "PB:long", "S:long", "f:int", "send_pos:long", "n_log:long", "log_first:long",
      "log_last:long", "seen_first:long", "trunc_first:long", "log_tp:int", "tp:int",
      "lost:int", "duplicate:int", "truncated:int", "unexpected:int", "aborted_read:int",
      "reordered:int", "unseen:int", "prev_seq:long", "ack_elsewhere:boolean",
      "head:boolean", "tail:boolean", "blk:int", "P:long")
      .add("unexpected_at", DataTypes.createArrayType(SEEN_AT, false), true);

  private MessageSweep() {}

  /**
   * Shuffle {@code events} by PB into {@code partitions} and judge every message.
   *
   * @param blockBits seqs per block are 2^blockBits (plan.BLOCK_BITS)
   * @param offsetBits a position is tp << offsetBits | (offset + 1) (plan.OFFSET_BITS)
   * @param partitionBits tp is topic << partitionBits | (partition + 1) (plan.PARTITION_BITS)
   */
  public static Dataset<Row> judge(SparkSession spark, Dataset<Row> events, int partitions,
      int blockBits, int offsetBits, int partitionBits) {
    Layout layout = new Layout(blockBits, offsetBits, partitionBits);
    JavaRDD<InternalRow> rows =
        events.repartition(partitions, col("PB")).queryExecution().toRdd().toJavaRDD();
    JavaRDD<Row> out = rows.mapPartitions(
        (FlatMapFunction<Iterator<InternalRow>, Row>) it -> new Task(layout, it).run().iterator());
    return spark.createDataFrame(out, OUTPUT);
  }

  /** The packing of positions and keys; shipped to the tasks with the closure. */
  static final class Layout implements java.io.Serializable {
    final int blockBits, offsetBits;
    final long partitionMask;

    Layout(int blockBits, int offsetBits, int partitionBits) {
      this.blockBits = blockBits;
      this.offsetBits = offsetBits;
      this.partitionMask = (1L << partitionBits) - 1;
    }
  }

  /** One shuffle partition: its rows, sorted, then swept message by message. */
  static final class Task {
    private final Layout layout;
    private int n;
    private long[] pb, seq, pos;
    private int[] flags;
    private int[] order; // row indices sorted by (PB, S)
    private final List<Row> out = new ArrayList<>();
    // Last message seen per partition of the final log, within the current PB.
    private final HashMap<Long, Message> lastInPartition = new HashMap<>();

    Task(Layout layout, Iterator<InternalRow> it) {
      this.layout = layout;
      int cap = 1 << 16;
      pb = new long[cap];
      seq = new long[cap];
      pos = new long[cap];
      flags = new int[cap];
      while (it.hasNext()) {
        InternalRow r = it.next();
        if (n == cap) {
          cap *= 2;
          pb = Arrays.copyOf(pb, cap);
          seq = Arrays.copyOf(seq, cap);
          pos = Arrays.copyOf(pos, cap);
          flags = Arrays.copyOf(flags, cap);
        }
        pb[n] = r.getLong(0);
        seq[n] = r.getLong(1);
        pos[n] = r.isNullAt(2) ? NULL : r.getLong(2);
        flags[n] = r.getInt(3);
        n++;
      }
    }

    List<Row> run() {
      order = Sorting.byKeyThenSeq(pb, seq, n);
      long[] positions = new long[8];
      int[] merged = new int[8];
      Message current = new Message();
      long block = NULL;
      int i = 0;
      while (i < n) {
        int first = order[i];
        long p = pb[first], s = seq[first];
        if (p != block) {
          endBlock();
          block = p;
        }
        // The message's distinct positions, each with its rows' flags OR-ed.
        int k = 0;
        for (; i < n && pb[order[i]] == p && seq[order[i]] == s; i++) {
          int j = order[i];
          int q = 0;
          while (q < k && positions[q] != pos[j]) q++;
          if (q == k) {
            if (k == positions.length) {
              positions = Arrays.copyOf(positions, 2 * k);
              merged = Arrays.copyOf(merged, 2 * k);
            }
            positions[k] = pos[j];
            merged[k++] = 0;
          }
          merged[q] |= flags[j];
        }
        current.judge(layout, p, s, positions, merged, k);
        List<Message> windows = current.otherWindows(layout);
        current = place(current);
        for (Message w : windows) place(w);
      }
      endBlock();
      return out;
    }

    /** Reorder, head and tail need the message's predecessor and successor in seq order
     * within its block and final-log partition: the sweep's previous one there, and
     * whichever comes next (or none, at the end of the block). Returns a Message the
     * caller may overwrite: the one this replaces as its partition's last, or a new one. */
    private Message place(Message m) {
      if (!m.inWindow) { // not on the final log, or never sent: outside every window
        if (m.leaves()) out.add(m.row(layout));
        return m;
      }
      Message prev = lastInPartition.put(m.logTp, m);
      m.follow(prev);
      if (prev == null) return new Message();
      if (prev.leaves()) out.add(prev.row(layout)); // it has a successor, so it is no tail
      return prev;
    }

    private void endBlock() {
      for (Message last : lastInPartition.values()) {
        last.tail = true;
        if (last.leaves()) out.add(last.row(layout));
      }
      lastInPartition.clear();
    }
  }

  /** One message's verdict, primitives only, reused across messages. A message with copies
   * in several final-log partitions is judged once, here, and takes part in the order of
   * each further partition through a window-only Message (see {@link #otherWindows}). */
  static final class Message {
    long pb, seq, sendPos, nLog, logFirst, logLast, seenFirst, truncFirst, logTp, home, prevSeq;
    int flags, lost, duplicate, truncated, unexpected, abortedRead, reordered, unseen;
    boolean ackElsewhere, head, tail, inWindow;
    long[] logPositions = new long[4]; // its final-log positions, ascending
    List<Row> seenAt; // a never-sent message: every position it was seen at; else null

    void judge(Layout l, long pb, long seq, long[] positions, int[] merged, int k) {
      this.pb = pb;
      this.seq = seq;
      int f = 0;
      long truncPolls = 0;
      sendPos = logFirst = logLast = truncFirst = NULL;
      nLog = 0;
      boolean sent = false;
      for (int q = 0; q < k; q++) sent |= (merged[q] & SEND) != 0;
      seenAt = sent ? null : new ArrayList<>(k);
      for (int q = 0; q < k; q++) {
        int g = merged[q];
        long at = positions[q];
        boolean onLog = (g & LOG) != 0;
        if ((g & ACKED) != 0 && !onLog) g |= ACK_OFF_LOG;
        if ((g & POLL) != 0 && !onLog) g |= POLL_OFF_LOG;
        f |= g;
        if ((g & SEND) != 0 && at != NULL && (sendPos == NULL || at > sendPos)) sendPos = at;
        if (onLog) {
          if (nLog == logPositions.length) logPositions = Arrays.copyOf(logPositions, 2 * (int) nLog);
          logPositions[(int) nLog++] = at;
          logFirst = logFirst == NULL ? at : Math.min(logFirst, at);
          logLast = logLast == NULL ? at : Math.max(logLast, at);
        }
        if ((g & POLL_OFF_LOG) != 0) {
          truncPolls++;
          truncFirst = truncFirst == NULL ? at : Math.min(truncFirst, at);
        }
        if (!sent && (g & (LOG | POLL)) != 0) seenAt.add(RowFactory.create(at, onLog));
      }
      Arrays.sort(logPositions, 0, (int) nLog);
      flags = f;
      boolean acked = (f & ACKED) != 0, onLog = nLog > 0;
      boolean knownPartition = sendPos != NULL && ((sendPos >> l.offsetBits) & l.partitionMask) > 0;
      seenFirst = logFirst != NULL ? logFirst : truncFirst;
      home = sent && knownPartition ? sendPos : seenFirst != NULL ? seenFirst : sendPos;
      logTp = logFirst == NULL ? NULL : logFirst >> l.offsetBits;
      inWindow = sent && seq >= 0 && onLog; // a never-sent record has no send order to break
      lost = acked && !onLog ? 1 : 0;
      duplicate = (int) Math.max(nLog - 1, 0);
      truncated = sent ? (int) truncPolls : 0; // a never-sent record read anywhere is unexpected
      // Positions it was seen at; plan.summary counts each position once over all messages.
      unexpected = sent ? 0 : seenAt.size();
      abortedRead = (f & FAILED) != 0 && onLog ? 1 : 0;
      unseen = acked && onLog && (f & POLL) == 0 ? 1 : 0;
      ackElsewhere = acked && (f & ACK_OFF_LOG) != 0;
      reordered = 0;
      prevSeq = NULL;
      head = tail = false;
    }

    /** The message as it takes part in the order of each final-log partition after the
     * first that holds a copy of it: at its first copy there, with no counts of its own
     * but a reorder, and the same key and home. Empty unless it sits in a window. */
    List<Message> otherWindows(Layout l) {
      long tp = logTp;
      if (!inWindow || logPositions[(int) nLog - 1] >> l.offsetBits == tp) {
        return Collections.emptyList(); // all its copies are in one partition: the usual case
      }
      List<Message> windows = new ArrayList<>(1);
      for (int q = 1; q < nLog; q++) {
        long at = logPositions[q];
        if (at >> l.offsetBits == tp) continue; // a later copy in a partition already taken
        tp = at >> l.offsetBits;
        Message w = new Message();
        w.pb = pb;
        w.seq = seq;
        w.home = home;
        w.logTp = tp;
        w.logFirst = w.logLast = at;
        w.sendPos = w.seenFirst = w.truncFirst = w.prevSeq = NULL;
        w.inWindow = true;
        windows.add(w);
      }
      return windows;
    }

    /** Judge against the previous message of the same block and partition (null: none). */
    void follow(Message prev) {
      head = inWindow && prev == null;
      if (inWindow && prev != null && logFirst < prev.logFirst) {
        reordered = 1;
        prevSeq = prev.seq;
      }
    }

    boolean anomalous() {
      return lost + duplicate + truncated + unexpected + abortedRead + reordered + unseen > 0;
    }

    boolean leaves() {
      return anomalous() || ackElsewhere || head || tail;
    }

    Row row(Layout l) {
      long blk = seq >> l.blockBits;
      return RowFactory.create(pb, seq, flags, box(sendPos), nLog, box(logFirst), box(logLast),
          box(seenFirst), box(truncFirst), logTp == NULL ? null : (int) logTp,
          home == NULL ? null : (int) (home >> l.offsetBits), lost, duplicate, truncated,
          unexpected, abortedRead, reordered, unseen, box(prevSeq), ackElsewhere, head, tail,
          (int) blk, pb ^ blk, seenAt == null ? null : seenAt.toArray(new Row[0]));
    }
  }

  /** Index sorts on primitive arrays, no boxing. */
  static final class Sorting {
    private Sorting() {}

    /** Row indices grouped by key (groups in order of first appearance: each is swept on
     * its own), each group ordered by seq. A counting sort by key, then one sort per group. */
    static int[] byKeyThenSeq(long[] key, long[] seq, int n) {
      int[] group = new int[n];
      long[] groupKey = new long[16];
      int[] size = new int[16];
      int groups = 0;
      // Open addressing on long keys, grown at half full: a task usually holds a few dozen
      // blocks, but one group per undecodable id is possible.
      int[] slots = new int[64];
      Arrays.fill(slots, -1);
      for (int i = 0; i < n; i++) {
        int h = slot(slots, groupKey, key[i]);
        int g = slots[h];
        if (g < 0) {
          g = groups;
          if (groups == groupKey.length) {
            groupKey = Arrays.copyOf(groupKey, 2 * groups);
            size = Arrays.copyOf(size, 2 * groups);
          }
          groupKey[groups] = key[i];
          slots[h] = groups++;
          if (2 * groups > slots.length) {
            slots = new int[2 * slots.length];
            Arrays.fill(slots, -1);
            for (int r = 0; r < groups; r++) slots[slot(slots, groupKey, groupKey[r])] = r;
          }
        }
        group[i] = g;
        size[g]++;
      }
      int[] start = new int[groups + 1];
      for (int g = 0; g < groups; g++) start[g + 1] = start[g] + size[g];
      int[] order = new int[n];
      int[] fill = Arrays.copyOf(start, groups);
      for (int i = 0; i < n; i++) order[fill[group[i]]++] = i;
      for (int g = 0; g < groups; g++) bySeq(order, start[g], start[g + 1], seq);
      return order;
    }

    /** The slot holding {@code k}, or the empty slot where it belongs. */
    private static int slot(int[] slots, long[] groupKey, long k) {
      int mask = slots.length - 1;
      int h = (int) (mix(k) & mask);
      while (slots[h] >= 0 && groupKey[slots[h]] != k) h = (h + 1) & mask;
      return h;
    }

    private static long mix(long k) { // a 64-bit finaliser: PB's low bits alone may cluster
      k ^= k >>> 33;
      k *= 0xff51afd7ed558ccdL;
      k ^= k >>> 33;
      return k;
    }

    /** Sort order[from, to) by seq. Within one key the seqs span one block, so they pack
     * with the index into one long and sort as primitives; anything wider falls back to
     * a comparison sort. */
    static void bySeq(int[] order, int from, int to, long[] seq) {
      int len = to - from;
      if (len < 2) return;
      long lo = Long.MAX_VALUE, hi = Long.MIN_VALUE;
      for (int i = from; i < to; i++) {
        lo = Math.min(lo, seq[order[i]]);
        hi = Math.max(hi, seq[order[i]]);
      }
      if (hi - lo >= 0 && hi - lo < (1L << 32)) {
        long[] packed = new long[len];
        for (int i = 0; i < len; i++) packed[i] = ((seq[order[from + i]] - lo) << 31) | order[from + i];
        Arrays.sort(packed);
        for (int i = 0; i < len; i++) order[from + i] = (int) (packed[i] & 0x7fffffffL);
        return;
      }
      Integer[] boxed = new Integer[len];
      for (int i = 0; i < len; i++) boxed[i] = order[from + i];
      Arrays.sort(boxed, (a, b) -> Long.compare(seq[a], seq[b]));
      for (int i = 0; i < len; i++) order[from + i] = boxed[i];
    }
  }

  private static Object box(long v) {
    return v == NULL ? null : (Object) v;
  }

  private static StructType schema(String... fields) {
    List<StructField> list = new ArrayList<>();
    for (String f : fields) {
      String[] nameType = f.split(":");
      DataType t = switch (nameType[1]) {
        case "long" -> DataTypes.LongType;
        case "int" -> DataTypes.IntegerType;
        default -> DataTypes.BooleanType;
      };
      list.add(DataTypes.createStructField(nameType[0], t, true));
    }
    return DataTypes.createStructType(list);
  }
}
