// Prints, for each line of stdin, the terms of Anserini's default analyzer (Lucene's EnglishAnalyzer:
// Porter stemmer, English stop set), space-separated: the reference lsrbench.data.bm25 is checked against.
import io.anserini.analysis.DefaultEnglishAnalyzer;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import java.io.*;
import java.nio.charset.StandardCharsets;

public class Tok {
  public static void main(String[] args) throws Exception {
    Analyzer a = DefaultEnglishAnalyzer.newDefaultInstance();
    BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
    String line;
    while ((line = r.readLine()) != null) {
      TokenStream ts = a.tokenStream("contents", line);
      CharTermAttribute t = ts.addAttribute(CharTermAttribute.class);
      ts.reset();
      StringBuilder sb = new StringBuilder();
      boolean first = true;
      while (ts.incrementToken()) { if (!first) sb.append(' '); sb.append(t.toString()); first = false; }
      ts.end(); ts.close();
      out.println(sb);
    }
  }
}
